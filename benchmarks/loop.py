"""``python -m benchmarks.loop``: overhead of the live loop beyond its durable commits (issue 4).

One process, one disk (a temporary directory under ``--dir``), measured in interleaved rounds so
all measurements see the same disk conditions (fsync latency on shared disks drifts):

* **loop**: one full turn of ``maka_ref._runtime.run_turn`` in a *fresh* workspace: a T1 script
  of ``--calls`` model steps, each one ``Write`` call (distinct file, ≈ 250-byte content),
  then a text step that ends the turn. Includes everything a turn pays: workspace identity
  (marker creation), opening both stores (schema creation), header create, user event,
  the provider/tool loop (preflight, effect log line fsynced, the Write itself, T1, T2,
  history), model text event, terminal barrier, terminal header, ``run_completed``, the
  summary read-back, store close.
* **empty**: the same turn with no tool call (user event → text step → terminal) in a fresh
  workspace — the **fixed per-turn cost** (identity, store open, header create, user event,
  text event, terminal, summary, close). ``loop − empty`` is the cost of the calls alone.
* **T1+T2**: the durable benchmark's own measurement (``benchmarks.durable.StoreCalls.run``,
  imported, not copied): ``--calls`` × (``commit_tool_prepared`` + ``commit_tool_outcome``)
  on the real ``RuntimeStore``, twice — (a) **fresh**: a new store directory per round, so the
  WAL grows from empty as in a fresh-workspace turn (same conditions as the loop); (b) **warm**:
  one long-lived store after a warm-up (the durable benchmark's steady state, WAL frames
  overwritten in place).

Overheads (per round, medians reported), with ``D`` = T1+T2 time for the ``--calls`` calls:

* ``gross = (loop − D) / D`` — everything beyond the two durable commits per call, fixed costs
  included;
* ``per-call = (loop − empty − D) / D`` — the loop's per-call overhead, fixed per-turn costs
  subtracted (the issue's target: < 25%).

Both are given against D fresh (headline) and D warm. Method and results: ``docs/performance.md``
("Live loop overhead (issue 4)"). ``--profile`` prints a cProfile of the loop turns instead.

``--compare TREE`` measures *before/after in one run*: ``TREE`` is another checkout of the
project (e.g. the code before a change); the benchmark alternates blocks of ``--rounds`` rounds
in a subprocess of ``TREE`` and of this checkout (``--blocks`` each, order flipped every block,
each subprocess importing its own ``maka_ref``), pools the per-round values of each side and
reports both side by side, so both see the same disk and load conditions.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.durable import StoreCalls, _filesystem
from maka_ref._runtime import run_turn
from maka_ref._runtime.tool_runtime import ToolRuntime
from maka_ref._store.runtime_store import RuntimeStore

CONTENT = "lorem ipsum dolor sit amet " * 9


def loop_script(calls: int) -> dict[str, Any]:
    """``calls`` model steps of one ``Write`` each, then a text step (T1 protocol)."""
    steps: list[dict[str, Any]] = [
        {"toolCalls": [{"id": f"call-{n}", "name": "Write", "args": {"path": f"notes/{n}.txt", "content": f"{n}: {CONTENT}"}}]}
        for n in range(calls)
    ]
    steps.append({"text": "done"})
    return {"userMessage": "write the notes", "protocol": "t1_after_preflight_v1", "steps": steps}


class _Dirs:
    def __init__(self, root: Path) -> None:
        self.root, self.n = root, 0

    def fresh(self, kind: str) -> Path:
        self.n += 1
        path = self.root / f"{kind}-{self.n}"
        path.mkdir()
        return path


class _Parts:
    """Times, *in this process only*, the parts of a loop turn (no file of the library is
    changed): ``ToolRuntime._run_implementation`` (the tool effects: the effect-log line,
    fsynced, and the ``Write`` itself: temp file, fsync, rename, directory fsync) and the
    loop's own ``commit_tool_prepared`` + ``commit_tool_outcome`` (T1+T2 as the loop pays them).
    The wrapper costs ≈ 1 µs per wrapped call (30 per turn)."""

    TARGETS = ((ToolRuntime, "_run_implementation", "impl"), (RuntimeStore, "commit_tool_prepared", "t12"),
               (RuntimeStore, "commit_tool_outcome", "t12"))

    def __init__(self) -> None:
        self.acc = {"impl": 0.0, "t12": 0.0}
        self._saved: list[tuple[Any, str, Any]] = []

    def reset(self) -> None:
        self.acc = dict.fromkeys(self.acc, 0.0)

    def __enter__(self) -> "_Parts":
        for owner, name, key in self.TARGETS:
            original = owner.__dict__[name]

            def timed(*args: Any, _original: Any = original, _key: str = key, **kwargs: Any) -> Any:
                start = time.perf_counter()
                try:
                    return _original(*args, **kwargs)
                finally:
                    self.acc[_key] += time.perf_counter() - start

            self._saved.append((owner, name, original))
            setattr(owner, name, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        for owner, name, original in reversed(self._saved):
            setattr(owner, name, original)
        self._saved.clear()


def _turn(ws: Path, script: dict[str, Any], calls: int) -> float:
    gc.collect()
    start = time.perf_counter()
    summary = run_turn(ws, script)
    elapsed = time.perf_counter() - start
    if summary.status != "completed" or len(summary.tool_calls) != calls:
        raise AssertionError(f"benchmark turn did not complete: {summary.to_json()}")
    return elapsed


def _durable(store: StoreCalls, calls: int) -> float:
    return store.run(calls).wall


def measure(root: Path, calls: int, rounds: int, warmup: int) -> dict[str, Any]:
    dirs = _Dirs(root)
    script, empty = loop_script(calls), loop_script(0)
    warm = StoreCalls(dirs.fresh("warm"), calls)
    try:
        print(f"warm-up: {warmup} rounds", file=sys.stderr, flush=True)
        for _ in range(warmup):
            _turn(dirs.fresh("loop"), script, calls)
            _turn(dirs.fresh("empty"), empty, 0)
        _durable(warm, max(300, calls * 30))  # steady WAL size (see benchmarks.durable)
        per_round: list[dict[str, float]] = []
        parts = _Parts().__enter__()
        try:
            _rounds(rounds, calls, dirs, script, empty, warm, parts, per_round, root)
        finally:
            parts.__exit__()
    finally:
        warm.close()
    return _summary(calls, rounds, per_round)


def _rounds(rounds: int, calls: int, dirs: _Dirs, script: dict[str, Any], empty: dict[str, Any], warm: StoreCalls,
            parts: _Parts, per_round: list[dict[str, float]], root: Path) -> None:
    run_offset = 0
    for r in range(rounds):
        if r % 10 == 0:
            print(f"round {r + 1}/{rounds}", file=sys.stderr, flush=True)
        fresh = StoreCalls(dirs.fresh("fresh"), calls, run_offset=run_offset)
        run_offset += 1
        try:
            parts.reset()
            loop = _turn(dirs.fresh("loop"), script, calls)
            in_loop = dict(parts.acc)
            row = {
                "loop": loop,
                "impl": in_loop["impl"],
                "inLoopT12": in_loop["t12"],
                "empty": _turn(dirs.fresh("empty"), empty, 0),
                "fresh": _durable(fresh, calls),
                "warm": _durable(warm, calls),
            }
        finally:
            fresh.close()
        per_round.append(row)
        for path in list(root.iterdir()):  # keep the disk small; `warm` stays
            if not path.name.startswith("warm"):
                shutil.rmtree(path, ignore_errors=True)


def _summary(calls: int, rounds: int, per_round: list[dict[str, float]]) -> dict[str, Any]:
    med = {k: statistics.median(r[k] for r in per_round) for k in ("loop", "empty", "fresh", "warm", "impl", "inLoopT12")}

    def overheads(d: str) -> dict[str, float]:
        gross = [(r["loop"] - r[d]) / r[d] for r in per_round]
        per_call = [(r["loop"] - r["empty"] - r[d]) / r[d] for r in per_round]
        machinery = [(r["loop"] - r["empty"] - r[d] - r["impl"]) / r[d] for r in per_round]
        return {
            "gross": statistics.median(gross),
            "perCall": statistics.median(per_call),
            "perCallWithoutToolEffects": statistics.median(machinery),
            "grossOfMedians": (med["loop"] - med[d]) / med[d],
            "perCallOfMedians": (med["loop"] - med["empty"] - med[d]) / med[d],
        }

    return {
        "calls": calls,
        "rounds": rounds,
        "medianSeconds": med,
        "turnsPerSecond": 1 / med["loop"],
        "emptyTurnsPerSecond": 1 / med["empty"],
        "loopMsPerCall": (med["loop"] - med["empty"]) / calls * 1e3,
        "durableMsPerCall": {"fresh": med["fresh"] / calls * 1e3, "warm": med["warm"] / calls * 1e3,
                             "inLoop": med["inLoopT12"] / calls * 1e3},
        "toolEffectsMsPerCall": med["impl"] / calls * 1e3,
        "perRound": per_round,
        "overheadVsFresh": overheads("fresh"),
        "overheadVsWarm": overheads("warm"),
    }


def profile(root: Path, calls: int, turns: int, top: int) -> None:
    dirs = _Dirs(root)
    script = loop_script(calls)
    _turn(dirs.fresh("loop"), script, calls)
    prof = cProfile.Profile()
    for _ in range(turns):
        ws = dirs.fresh("loop")
        prof.enable()
        run_turn(ws, script)
        prof.disable()
    stats = pstats.Stats(prof, stream=sys.stdout)
    stats.sort_stats("cumulative").print_stats(top)
    stats.sort_stats("tottime").print_stats(top)


def compare(baseline: Path, calls: int, rounds: int, warmup: int, blocks: int, parent: str | None) -> dict[str, Any]:
    """Alternate ``blocks`` subprocess runs of ``baseline`` ("before") and this checkout ("after")."""
    here = Path(__file__).resolve().parent.parent
    pooled: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    for block in range(blocks):
        sides = [("before", baseline.resolve()), ("after", here)]
        for label, tree in sides if block % 2 == 0 else reversed(sides):
            print(f"block {block + 1}/{blocks}: {label} ({tree})", file=sys.stderr, flush=True)
            fd, out = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            try:
                cmd = [sys.executable, "-m", "benchmarks.loop", "--calls", str(calls), "--rounds", str(rounds),
                       "--warmup", str(warmup), "--json", out] + (["--dir", parent] if parent else [])
                env = {**os.environ, "PYTHONPATH": str(tree)}
                subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                with open(out, encoding="utf-8") as fh:
                    pooled[label].extend(json.load(fh)["loop"]["perRound"])
            finally:
                os.unlink(out)
    return {label: _summary(calls, len(rows), rows) for label, rows in pooled.items()}


def print_compare(env: dict[str, Any], results: dict[str, Any], baseline: str) -> None:
    before, after = results["before"], results["after"]
    n = after["calls"]
    print(f"Python {env['python']}, SQLite {env['sqlite']}, {env['platform']}, {env['cpus']} CPUs; "
          f"{after['rounds']} rounds per side, alternating blocks; before = {baseline}")
    print()
    print(f"| {n} Write calls, medians | before | after |")
    print("|---|---:|---:|")

    def row(label: str, key: Any, fmt: str) -> None:
        print(f"| {label} | {fmt.format(key(before))} | {fmt.format(key(after))} |")

    row("full turn, ms", lambda r: r["medianSeconds"]["loop"] * 1e3, "{:.2f}")
    row("turns per second", lambda r: r["turnsPerSecond"], "{:.1f}")
    row("empty turn, ms", lambda r: r["medianSeconds"]["empty"] * 1e3, "{:.2f}")
    row("loop ms per call (turn − empty) / calls", lambda r: r["loopMsPerCall"], "{:.3f}")
    row("T1+T2 ms per call, fresh store (D)", lambda r: r["durableMsPerCall"]["fresh"], "{:.3f}")
    row("T1+T2 ms per call, warm store", lambda r: r["durableMsPerCall"]["warm"], "{:.3f}")
    row("T1+T2 ms per call as the loop pays them", lambda r: r["durableMsPerCall"]["inLoop"], "{:.3f}")
    row("tool effects ms per call", lambda r: r["toolEffectsMsPerCall"], "{:.3f}")
    row("gross (turn − D) / D", lambda r: r["overheadVsFresh"]["gross"], "{:.1%}")
    row("per call (turn − empty − D) / D", lambda r: r["overheadVsFresh"]["perCall"], "{:.1%}")
    row("**per call without tool effects** (turn − empty − D − impl) / D",
        lambda r: r["overheadVsFresh"]["perCallWithoutToolEffects"], "{:.1%}")
    row("per call without tool effects, vs D warm", lambda r: r["overheadVsWarm"]["perCallWithoutToolEffects"], "{:.1%}")


def print_report(env: dict[str, Any], res: dict[str, Any]) -> None:
    med = res["medianSeconds"]
    n = res["calls"]
    print(f"Python {env['python']}, SQLite {env['sqlite']}, {env['platform']}, {env['cpus']} CPUs")
    print(f"directory: {env['dir']} ({env['filesystem']}); {res['rounds']} interleaved rounds, medians")
    print()
    print(f"| measurement ({n} Write calls) | median ms | per second |")
    print("|---|---:|---:|")
    print(f"| full turn, `run_turn`, fresh workspace | {med['loop'] * 1e3:.2f} | {res['turnsPerSecond']:.1f} turns |")
    print(f"| empty turn (fixed per-turn cost), fresh workspace | {med['empty'] * 1e3:.2f} | "
          f"{res['emptyTurnsPerSecond']:.1f} turns |")
    print(f"| {n} × T1+T2, fresh store (`StoreCalls.run`) | {med['fresh'] * 1e3:.2f} | "
          f"{n / med['fresh']:.0f} calls |")
    print(f"| {n} × T1+T2, warm store (`StoreCalls.run`) | {med['warm'] * 1e3:.2f} | {n / med['warm']:.0f} calls |")
    print()
    print(f"loop ms per call (turn − empty) / {n}: {res['loopMsPerCall']:.3f}; T1+T2 ms per call: "
          f"fresh {res['durableMsPerCall']['fresh']:.3f}, warm {res['durableMsPerCall']['warm']:.3f}")
    print()
    print("| overhead beyond T1+T2 (median of per-round ratios) | vs T1+T2 fresh | vs T1+T2 warm |")
    print("|---|---:|---:|")
    f, w = res["overheadVsFresh"], res["overheadVsWarm"]
    print(f"| gross: (turn − D) / D, fixed costs included | {f['gross']:.1%} | {w['gross']:.1%} |")
    print(f"| **per call: (turn − empty − D) / D** (target < 25%) | **{f['perCall']:.1%}** | {w['perCall']:.1%} |")
    print(f"| per call without the tool effects: (turn − empty − D − impl) / D | {f['perCallWithoutToolEffects']:.1%} "
          f"| {w['perCallWithoutToolEffects']:.1%} |")
    print()
    d = res["durableMsPerCall"]
    print(f"inside the loop, ms per call: T1+T2 as the loop pays them {d['inLoop']:.3f}; tool effects "
          f"(`_run_implementation`: effect-log line + Write, with their fsyncs) {res['toolEffectsMsPerCall']:.3f}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loop", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=None, help="parent of the temporary directory (default: the system temp dir)")
    parser.add_argument("--calls", type=int, default=10, help="Write calls per turn")
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=3, help="untimed warm-up rounds")
    parser.add_argument("--profile", type=int, default=0, metavar="TURNS", help="cProfile TURNS loop turns instead")
    parser.add_argument("--top", type=int, default=35, help="rows of the profile")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the results here")
    parser.add_argument("--compare", default=None, metavar="TREE",
                        help="before/after: alternate with another checkout TREE (see above)")
    parser.add_argument("--blocks", type=int, default=4, help="with --compare: blocks per side")
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="maka-loop-bench-", dir=args.dir))
    env = {
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "platform": f"{platform.system()} {platform.machine()}",
        "cpus": os.cpu_count(),
        "dir": str(root),
        "filesystem": _filesystem(root),
    }
    if args.compare:
        shutil.rmtree(root, ignore_errors=True)
        results = compare(Path(args.compare), args.calls, args.rounds, args.warmup, args.blocks, args.dir)
        env["dir"] = args.dir or tempfile.gettempdir()
        print_compare(env, results, args.compare)
        if args.json_path:
            with open(args.json_path, "w", encoding="utf-8") as fh:
                json.dump({"env": env, "compare": results, "baseline": args.compare}, fh, indent=2)
                fh.write("\n")
        return 0
    try:
        if args.profile:
            profile(root, args.calls, args.profile, args.top)
            return 0
        res = measure(root, args.calls, args.rounds, args.warmup)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print_report(env, res)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            json.dump({"env": env, "loop": res}, fh, indent=2)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
