"""``python -m benchmarks [--sizes 10000,100000,1000000] [--repeat N] [--json PATH]``.

Measures, per ledger size, in one process (method and results: docs/performance.md):

* ``json.loads`` of the ledger's JSON-lines text, line by line — the baseline;
* decode: ``decode_runtime_event`` of every parsed line (closed schema, normalisation,
  freezing) — reported separately, it is not part of the target;
* resolve: ``resolve_recovery`` over the already-decoded events;
* plan: ``build_resume_plan`` over the already-decoded events — **one call that resolves and
  plans** (the plan carries its ``resolution``), so it is what a restart pays for both answers
  and is the headline ratio. (Adding resolve and plan would count the resolution twice.)

The decoded ledger is built as the store reads a ledger back (``parse_json`` then
``decode_runtime_event``, row by row). Each measurement is the best of ``--repeat`` runs, each
run after ``gc.collect()`` with the cyclic collector paused while it runs (``--with-gc`` leaves
it running). json.loads, resolve and plan run round-robin within each repeat so background load
hits them alike; decode runs last, in its own block, because freeing a whole decoded copy of
the ledger between two plan runs would fragment the heap the plan then allocates in (a harness
artifact: a restart decodes once). The issue's targets (issue 2): plan / json.loads ≤ 1.0, and
the 1M run within 12× the 100k run (linear growth).
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import sys
import time
from typing import Any, Callable

from benchmarks.ledgers import build_ledger
from maka_ref._codec.jsontext import parse_json
from maka_ref._events.schema import decode_runtime_event
from maka_ref._ledger.resolver import resolve_recovery
from maka_ref._plan.phase0.plan import build_resume_plan

STEPS = ("jsonLoads", "decode", "resolve", "plan")


def _timed(fn: Callable[[], Any], with_gc: bool) -> float:
    """Seconds one call of ``fn`` takes; its result is dropped after the clock stops."""
    gc.collect()
    if not with_gc:
        gc.disable()
    try:
        start = time.perf_counter()
        result = fn()
        elapsed = time.perf_counter() - start
    finally:
        gc.enable()
    del result
    return elapsed


def measure(n_events: int, repeat: int, with_gc: bool = False) -> dict[str, Any]:
    events = build_ledger(n_events)
    lines = [json.dumps(e, ensure_ascii=False, separators=(",", ":")) for e in events]
    text_bytes = sum(len(line.encode("utf-8")) + 1 for line in lines)
    del events
    decoded = [decode_runtime_event(parse_json(line)) for line in lines]
    parsed = [json.loads(line) for line in lines]  # the input of the decode measurement

    plan = build_resume_plan(decoded)
    resolution = resolve_recovery(decoded)
    assert not resolution.has_corruption, "benchmark ledger must be healthy"
    assert plan.resolution == resolution and plan.disposition == "blocked"
    del plan, resolution

    steps: dict[str, Callable[[], Any]] = {
        "jsonLoads": lambda: [json.loads(line) for line in lines],
        "decode": lambda: [decode_runtime_event(value) for value in parsed],
        "resolve": lambda: resolve_recovery(decoded),
        "plan": lambda: build_resume_plan(decoded),
    }
    best = {name: float("inf") for name in STEPS}
    for _ in range(repeat):
        for name in ("jsonLoads", "resolve", "plan"):
            best[name] = min(best[name], _timed(steps[name], with_gc))
    for _ in range(repeat):
        best["decode"] = min(best["decode"], _timed(steps["decode"], with_gc))

    row: dict[str, Any] = {"events": n_events, "textMB": round(text_bytes / 1e6, 2)}
    for name in STEPS:
        row[f"{name}Seconds"] = best[name]
        row[f"{name}EventsPerSecond"] = n_events / best[name]
    for name in ("decode", "resolve", "plan"):
        row[f"{name}ToJsonLoads"] = best[name] / best["jsonLoads"]
    return row


def _print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "| events | text MB | json.loads s | decode s | resolve s | plan s "
        "| plan events/s | decode / loads | resolve / loads | **plan / loads** |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['events']:,} | {r['textMB']} | {r['jsonLoadsSeconds']:.3f} | {r['decodeSeconds']:.3f} "
            f"| {r['resolveSeconds']:.3f} | {r['planSeconds']:.3f} | {r['planEventsPerSecond']:,.0f} "
            f"| {r['decodeToJsonLoads']:.2f} | {r['resolveToJsonLoads']:.2f} | **{r['planToJsonLoads']:.2f}** |"
        )
    print()
    print("| events | json.loads events/s | decode events/s | resolve events/s | plan events/s |")
    print("|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['events']:,} | {r['jsonLoadsEventsPerSecond']:,.0f} | {r['decodeEventsPerSecond']:,.0f} "
            f"| {r['resolveEventsPerSecond']:,.0f} | {r['planEventsPerSecond']:,.0f} |"
        )


def growth(rows: list[dict[str, Any]], small: int = 100_000, large: int = 1_000_000) -> dict[str, float] | None:
    """Time at ``large`` / time at ``small`` per step (linear is large / small = 10×)."""
    by_size = {r["events"]: r for r in rows}
    if small not in by_size or large not in by_size:
        return None
    return {name: by_size[large][f"{name}Seconds"] / by_size[small][f"{name}Seconds"] for name in STEPS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeat", type=int, default=5, help="best of N for each measurement (default 5)")
    parser.add_argument("--with-gc", action="store_true", help="leave the cyclic GC running while timing")
    parser.add_argument("--json", dest="json_path", default=None, help="also write the results here")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]

    rows = []
    for n in sizes:
        print(f"measuring {n:,} events ...", file=sys.stderr, flush=True)
        rows.append(measure(n, args.repeat, args.with_gc))

    gc_note = "GC running" if args.with_gc else "GC paused while timing"
    print(f"Python {platform.python_version()} on {platform.machine()} ({platform.system()}); "
          f"best of {args.repeat}; {gc_note}")
    print("plan = build_resume_plan (resolves and plans in one call); resolve = resolve_recovery alone\n")
    _print_table(rows)
    factors = growth(rows)
    if factors is not None:
        print(
            f"\ngrowth 100k → 1M: plan {factors['plan']:.1f}×, resolve {factors['resolve']:.1f}×, "
            f"json.loads {factors['jsonLoads']:.1f}×, decode {factors['decode']:.1f}× "
            "(linear is 10×; the target is ≤ 12×)"
        )
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as fh:
            json.dump(
                {"python": platform.python_version(), "repeat": args.repeat, "withGc": args.with_gc,
                 "rows": rows, "growth100kTo1M": factors},
                fh,
                indent=2,
            )
            fh.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
